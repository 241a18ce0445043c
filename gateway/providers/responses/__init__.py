"""OpenAI's Responses API (`POST /v1/responses`, stateless), both ways, as pure translations:
`wire` (the request as read, the Response object, usage, events and their bytes), `native`
(the call as OpenAI's own API and Azure's v1 API take it, and their answers read for the
record), `to_chat` (a Responses call as a Chat Completions request, for every other offering),
`from_chat` (a Chat Completions answer as a Response) and `chat_events` (a Chat Completions
stream as the Responses stream's `response.*` events).

Reference: https://platform.openai.com/docs/api-reference/responses and its streaming events;
the shapes are those of the openai Python SDK's `types/responses/`."""
