"""The agentic agent: multi-step agent trajectories with tool calls (SWE agents, function calling)."""

from agents.categories.category import Category

CATEGORY = Category(
    key="agentic",
    title="agentic / tool-use trajectories",
    intent="multi-step agent trajectories with tool calls (SWE agents, function calling)",
    seed_queries=("agent", "trajectories", "swe", "tool", "function-calling", "openhands"),
    tag_filters=("agents", "agent", "tool-use", "function-calling", "tool-calling", "task_categories:text-generation"),
    keywords=(
        "agent",
        "agentic",
        "trajectory",
        "trajectories",
        "tool",
        "tools",
        "swe",
        "function",
        "calling",
        "openhands",
        "repository",
        "bash",
    ),
    evidence=("tool_calls", "shell"),
    subject="software",
    affinity={"agentic": 2.0, "agent": 2.0, "tool": 2.0, "coding": 0.5},
)
