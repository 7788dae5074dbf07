"""Test doubles that speak real wire formats, so tests exercise the unmodified vendor SDKs.

`evalctl.fakes.llm_server.FakeLLMServer` answers the Anthropic Messages API and the Gemini
generateContent API on 127.0.0.1. Run it by hand with
`python -m evalctl.fakes.llm_server --help`.

(Nothing is re-exported here: importing the server module from this package would make
`python -m evalctl.fakes.llm_server` warn that the module was imported twice.)
"""
