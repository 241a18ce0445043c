"""A Messages call's way through its candidates (`relay.answer_messages`): Anthropic's offerings
sent the body as written and their answer relayed as Anthropic wrote it (`native`,
`native_stream`), every other offering tried as a chat call is and its answer written in
Messages' shape (`message` for a plain answer, `events` for a stream); and its token count
(`count`)."""
