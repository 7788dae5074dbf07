"""The daemon's lifecycle, client side: paths, flock, spawn, readiness, stop.

`DaemonManager(settings, DaemonSpec(...)).ensure_running()` is the entry point; the local
provider and `evalctl server start|stop|status` use it.
"""
