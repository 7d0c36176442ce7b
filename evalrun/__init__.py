"""evalrun: did the agent get better or worse? Run it on fixture tasks and find out."""

__version__ = "0.1.0"
