"""Model clients: the Anthropic and OpenAI(-compatible) policies, the reader, settings, and fake servers for tests.

    anthropic_policy.AnthropicPolicy   tool use through the anthropic SDK, prompt caching on
    openai_policy.OpenAIPolicy         tool calls through the openai SDK; base_url for llama.cpp, vLLM, Ollama
    reader.Reader                      LongMemEval-V2's reader: answers from a Context, `\\boxed{...}`
    config.load_settings()             defaults < config file < environment < arguments
    fakes                              loopback HTTP servers speaking both protocols from a script
"""
