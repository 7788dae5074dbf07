"""The built-in plugins: the `assert` kind with its assertion types, then the built-in
suites, one package each (its kind, tools and the resources it needs).

Each is a plugin with a `register(registry)` function, loaded through the same API
(`evalctl.plugin`) as third-party plugins; this list is the only place that names them.
"""

BUILTIN_PLUGINS = (
    "evalctl.assertions.plugin",
    "evalctl.suites.release_assets",
    "evalctl.suites.asset_triage",
    "evalctl.suites.sommelier",
    # Not a suite: the model-graded `judge` assertion type, registered the same way.
    "evalctl.judge",
)
