"""The admin manages people and their scope grants only. Entries, evidence and events change through
the services (and their Events), never through admin forms."""

from django.contrib import admin

from curation.models import ScopeGrant


@admin.register(ScopeGrant)
class ScopeGrantAdmin(admin.ModelAdmin):
    list_display = ("user", "prefix")
    search_fields = ("user__username", "prefix")

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        # A prefix is taken as typed: spaces around it are refused with the rule, never trimmed away.
        if db_field.name == "prefix":
            kwargs["strip"] = False
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def changeform_view(self, request, *args, **kwargs):
        """A refused grant (a prefix that is not a scope) answers 422, as a refused scope does everywhere."""
        response = super().changeform_view(request, *args, **kwargs)
        form = getattr(response, "context_data", None) and response.context_data.get("adminform")
        if request.method == "POST" and form and form.form.errors:
            response.status_code = 422
        return response
