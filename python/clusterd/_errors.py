"""The exceptions every part of the package raises."""


class ClusterdError(ConnectionError):
    """The head cannot be found or reached, or it refused a request (the message says which and why)."""
