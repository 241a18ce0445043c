"""Where a call comes in: the ASGI guards (head and body bounds), the lean ASGI route for Bearer
calls and the Django views, both entering through one completions entrance
(`gateway.edge.completion.complete`); the caller, its X-Request-Id claim, the models list,
the record lookup, the playground page and the ASGI lifespan."""
