"""The tape's own error (the modules that build, edit and run tapes raise it)."""

__all__ = ["TapeError"]


class TapeError(ValueError):
    """A tape cannot be built, edited or run as asked."""
