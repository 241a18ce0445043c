"""A Responses call's tries: OpenAI's own offerings (and Azure's) sent the call as written and
their answer relayed as OpenAI wrote it (`native`, `native_stream`), every other offering
tried as a chat call is (`relay`)."""
