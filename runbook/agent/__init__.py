"""The agent loop that drives method C: tools run in a sandbox, a policy picks the calls, limits stop it.

    types        provider-neutral Message / ToolCall / ToolResult / ToolSpec / Span and the Policy protocol
    tools        the tool specs and how each call becomes a sandbox command
    loop         AgentLoop(policy, toolbox, limits).run(system, user) -> AgentRun
    exceptions   why a loop stops (finish, a limit, a failing policy)
    transcript   the JSONL record of every query, and its replay
    prompts      what a model policy is told

Everything that picks the next call (the offline planner, the model policies, their registry) lives in
runbook.policies.
"""
