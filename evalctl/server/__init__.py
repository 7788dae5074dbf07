"""The local inference daemon: a gRPC server around one llama-cpp-python model.

Modules: `options` (flags), `daemon` (lifecycle of the process), `servicer` (RPCs),
`engine` (the model), `prompt` and `toolcalls` (chat template, tools), `convert`
(proto <-> chat types), `jsonlog` (structured log), `gen` (generated code, `make proto`).
"""
