"""The patient-facing trial assistant: session state, prompts, tools and the agent loop (no UI code).

The trial records and the TrialBackend the tools read through are in services.trials; the model client in
services.llm.
"""

from services.assistant.arguments import ACTIVITY_LEVELS
from services.assistant.grounding import GroundingWarning
from services.assistant.orchestrator import Callbacks, Orchestrator, TrialSelection, WidgetAnswer
from services.assistant.session import AssistantSession, ChatEntry
from services.assistant.tools import build_registry

__all__ = [
    "ACTIVITY_LEVELS", "AssistantSession", "Callbacks", "ChatEntry", "GroundingWarning", "Orchestrator",
    "TrialSelection", "WidgetAnswer", "build_registry",
]  # fmt: skip
