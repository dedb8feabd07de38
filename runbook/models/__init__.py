"""Talking to language models: the provider-neutral message model, one client per provider, the reader and the
judges, and fake servers that speak the providers' real wire protocols on loopback.

    messages    Message / ToolCall / ToolResult / ToolSpec: what every provider client translates
    client      what the clients share: retries on transient failures, clear errors for bad keys and models
    anthropic   AnthropicModel: Anthropic's Messages API (tool_use / tool_result), prompt caching
    openai      OpenAIModel: any OpenAI-compatible endpoint (tools / tool_calls), llama.cpp, vLLM, Ollama
    reader      LongMemEval-V2's reader: answers from a Context, `\\boxed{...}`
    judge       LongMemEval-V2's LLM judges (abstention, gotchas)
    fakes       loopback HTTP servers speaking both protocols from a script, for tests

The policies that drive method C's agent with these clients live in runbook.policies; settings in runbook.config.
"""
