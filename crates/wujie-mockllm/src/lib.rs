//! A scripted mock model server (OpenAI Chat/Responses, Anthropic Messages) for offline agent tests.
