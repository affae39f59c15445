import contextvars
import uuid

# Shared by every Event one request writes, so an auditor can see what one click did.
current_request_id: contextvars.ContextVar[str] = contextvars.ContextVar("current_request_id", default="")


class RequestIdMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request_id = uuid.uuid4().hex
        token = current_request_id.set(request_id)
        try:
            response = self.get_response(request)
        finally:
            current_request_id.reset(token)
        response["X-Request-Id"] = request_id
        return response
