"""evalrun's model gateway: the only way an agent in a sandbox reaches its model.

The harness runs one gateway on the host for the duration of a run (`Gateway`, a small HTTP
proxy in a thread of its own). Each sample gets a unix socket of its own in a folder the sandbox
sees read-only; a tiny stdlib forwarder inside the sandbox (`forwarder.py`) listens on
127.0.0.1 and carries the agent's connections to that socket. So the sandbox keeps
`network: none` and holds no key: the gateway adds the real key from the host environment and
forwards the request, unchanged, to the provider's endpoint. It reads every response - JSON or
server-sent events, in any of the four APIs agents speak (OpenAI Chat Completions, OpenAI
Responses, Anthropic Messages, Google Gemini) - for the model and the tokens used, so evalrun
prices each sample itself (`meter.py`), whatever the agent reports, and enforces budgets there.
"""
