"""Demo data for `manage.py seed_demo`."""
