from django.apps import AppConfig

from memoryadmin import collector
from memoryadmin.data_folders import make_data_folders


class ProjectConfig(AppConfig):
    """The project's own start-up work, which belongs to no app: the garbage collector's threshold, the data
    folders."""

    name = "memoryadmin"
    label = "memoryadmin"

    def ready(self):
        collector.tune()
        make_data_folders()
