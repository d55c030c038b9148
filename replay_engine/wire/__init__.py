"""The wire: how recorded chunks look to a connected agent, one module per dialect.

``dialect`` is the seam the server composes (routes, request reading, stream encoder,
non-streaming assembler, error mapping); ``openai_chat`` (chat completions), ``native``
(NDJSON), ``anthropic`` (Messages), ``responses`` (OpenAI Responses) and ``gemini`` (Google
Gemini) implement it, and ``blocks`` is the block walker the block-framed wires share.
Everything here is pure.
"""
