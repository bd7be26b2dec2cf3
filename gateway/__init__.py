"""manualqa gateway: configuration, CLI, answer pipeline, answer log, HTTP app, replay."""

__version__ = "0.1.0"
