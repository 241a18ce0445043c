"""The call as read: who calls (`identity`), its routing and answer fields (`options`,
`answer_rules`, `tool_rules`), what it says about itself (`tags`), and every refusal as
OpenAI's error object (`errors`)."""
