"""The patient-facing trial assistant: session state, prompts, tools and the agent loop (no UI code)."""

from services.assistant.grounding import GroundingWarning, check_answer
from services.assistant.orchestrator import (
    MAX_MODEL_CALLS,
    Callbacks,
    ModelClient,
    Orchestrator,
    TrialSelection,
    TurnResult,
    UserInput,
    WidgetAnswer,
)
from services.assistant.session import (
    DEFAULT_MODEL,
    FLAGS,
    MODEL_CHOICES,
    PHASES,
    AssistantSession,
    AssistantSettings,
    ChatEntry,
    UsageCounters,
)
from services.assistant.tools import (
    ACTIVITY_LEVELS,
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
    ToolRegistry,
    TrialBackend,
    TrialDetails,
    TrialQuery,
    TrialSummary,
    build_registry,
    trial_card,
)

__all__ = [
    "ACTIVITY_LEVELS", "DEFAULT_MODEL", "FLAGS", "MAX_MODEL_CALLS", "MODEL_CHOICES", "PHASES",
    "AdverseEvent", "AdverseEvents", "AssistantSession", "AssistantSettings", "Callbacks", "ChatEntry",
    "DashboardStats", "EligibilityInfo", "GroundingWarning", "ModelClient", "NearestSite", "Orchestrator",
    "Place", "ReportOutput", "ReportRequest", "SearchPage", "Site", "ToolRegistry", "TrialBackend",
    "TrialDetails", "TrialQuery", "TrialSelection", "TrialSummary", "TurnResult", "UsageCounters",
    "UserInput", "WidgetAnswer", "build_registry", "check_answer", "trial_card",
]  # fmt: skip
