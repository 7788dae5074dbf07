"""The built-in suites, one package each (`release_assets`, `asset_triage`, `sommelier`):
plugins like any other, registered through `evalctl.plugin` and listed with the other
built-ins in `evalctl.builtin_plugins`."""
