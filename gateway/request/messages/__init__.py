"""Anthropic's Messages API as a call (`POST /v1/messages`, `POST /v1/messages/count_tokens`):
its body checked (`checks`), translated into the Chat Completions request every other API's
adapter is given (`to_chat`), and held with the body as written for Anthropic's offerings
(`call`); its refusals in Anthropic's error shape (`errors`)."""
