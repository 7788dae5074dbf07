"""Built-in targets: your own application as the system under test (`python`, `http`,
`command`), each a provider the runner drives like a model. docs/targets.md."""
