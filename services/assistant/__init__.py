"""The patient-facing trial assistant: session state, prompts, tools and the agent loop (no UI code)."""

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
from services.llm import DEFAULT_MODEL, MODEL_CHOICES, ModelClient
from services.trials import (
    AdverseEvent,
    AdverseEvents,
    DashboardStats,
    EligibilityInfo,
    NearestSite,
    Place,
    ReportOutput,
    ReportRequest,
    SearchPage,
    Site,
    TrialBackend,
    TrialDetails,
    TrialQuery,
    TrialSummary,
)

__all__ = [
    "ACTIVITY_LEVELS", "DEFAULT_MODEL", "FLAGS", "MAX_MODEL_CALLS", "MODEL_CHOICES", "CONVERSATION_PHASES",
    "AdverseEvent", "AdverseEvents", "AssistantSession", "AssistantSettings", "Callbacks", "ChatEntry",
    "DashboardStats", "EligibilityInfo", "GroundingWarning", "ModelClient", "NearestSite", "Orchestrator",
    "Place", "ReportOutput", "ReportRequest", "SearchPage", "Site", "ToolRegistry", "TrialBackend",
    "TrialDetails", "TrialQuery", "TrialSelection", "TrialSummary", "TurnResult", "UsageCounters",
    "UserInput", "WidgetAnswer", "build_registry", "check_answer", "trial_card",
]  # fmt: skip
