"""The patient-facing trial assistant: session state, prompts, tools and the agent loop (no UI code).

The trial records and the TrialBackend the tools read through are in services.trials; the model client in
services.llm.
"""

from services.assistant.grounding import GroundingWarning, check_answer
from services.assistant.handlers import ACTIVITY_LEVELS, trial_card
from services.assistant.orchestrator import (
    MAX_MODEL_CALLS,
    Callbacks,
    Orchestrator,
    TrialSelection,
    TurnResult,
    UserInput,
    WidgetAnswer,
)
from services.assistant.registry import ToolRegistry
from services.assistant.session import (
    CONVERSATION_PHASES,
    FLAGS,
    AssistantSession,
    AssistantSettings,
    ChatEntry,
    UsageCounters,
)
from services.assistant.tools import build_registry

__all__ = [
    "ACTIVITY_LEVELS", "CONVERSATION_PHASES", "FLAGS", "MAX_MODEL_CALLS", "AssistantSession", "AssistantSettings",
    "Callbacks", "ChatEntry", "GroundingWarning", "Orchestrator", "ToolRegistry", "TrialSelection", "TurnResult",
    "UsageCounters", "UserInput", "WidgetAnswer", "build_registry", "check_answer", "trial_card",
]  # fmt: skip
