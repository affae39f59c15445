"""The folders the settings in force write into, made when the project starts (its AppConfig.ready, which
every process runs before it opens the database or the broker) rather than when the settings are imported:
a process that only reads a setting makes nothing, and a fresh clone or a new MEMORYADMIN_DATA_DIR still
works."""

from pathlib import Path

from django.conf import settings


def data_folders() -> list[Path]:
    """What nothing else creates: the SQLite database's folder (and its test database's), the filesystem
    broker's queue and exchange tables, beat's schedule file's folder and the static files' root (WhiteNoise
    warns about a missing one)."""
    folders = []
    for database in settings.DATABASES.values():
        if database["ENGINE"] == "django.db.backends.sqlite3":
            for name in (database["NAME"], database.get("TEST", {}).get("NAME")):
                if name and str(name) != ":memory:" and not str(name).startswith("file:"):
                    folders.append(Path(name).parent)
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
        folders += [Path(options[key]) for key in ("data_folder_in", "data_folder_out", "control_folder")]
    folders += [Path(settings.CELERY_BEAT_SCHEDULE_FILENAME).parent, Path(settings.STATIC_ROOT)]
    return list(dict.fromkeys(folders))


def make_data_folders() -> None:
    for folder in data_folders():
        folder.mkdir(parents=True, exist_ok=True)
