"""The rules layer: pure functions and constants (and the redacting column types), importing only each other."""
