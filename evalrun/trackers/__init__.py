"""Trackers are sinks for a run's records beside the local store, chosen by `tracker=<name>`."""

from evalrun.trackers.base import Tracker

__all__ = ["Tracker"]
