"""The admin manages people and their scope grants only. Entries, evidence and events change through
the services (and their Events), never through admin forms."""

from django.contrib import admin

from curation.models import ScopeGrant


@admin.register(ScopeGrant)
class ScopeGrantAdmin(admin.ModelAdmin):
    list_display = ("user", "prefix")
    search_fields = ("user__username", "prefix")
