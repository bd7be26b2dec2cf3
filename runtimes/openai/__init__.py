"""An upstream OpenAI-compatible server as the backend: the gateway runs no model of its own."""
