"""What they may see: scopes and policy, the recall and write pipelines, ranking, budget,
rendering, multi-agent injection and write-back, audit — and the public facade on top."""

from bridge.errors import BridgeError, InvalidInput, ManifestError, NotPermitted, RecallIncomplete
from bridge.facade import Limits, MemoryBridge, SyncMemoryBridge
from bridge.models import CaptureResult, MemoryRef, Message, RecalledMemory, RecallResult, WriteResult
from bridge.policy import Policy, PolicyConfig
from bridge.vocabulary import Kind, Purpose

__all__ = [
    "BridgeError",
    "CaptureResult",
    "InvalidInput",
    "Kind",
    "Limits",
    "ManifestError",
    "MemoryBridge",
    "MemoryRef",
    "Message",
    "NotPermitted",
    "Policy",
    "PolicyConfig",
    "Purpose",
    "RecallIncomplete",
    "RecalledMemory",
    "RecallResult",
    "SyncMemoryBridge",
    "WriteResult",
]
