"""What they may see: scopes and policy, the recall and write pipelines, ranking, budget,
rendering, multi-agent injection and write-back, audit — and the public facade on top."""

from bridge.errors import BridgeError, InvalidInput, ManifestError, NotPermitted, RecallIncomplete, VikingBridgeError
from bridge.facade import MemoryBridge, SyncMemoryBridge, open_bridge
from bridge.operations.limits import Limits
from bridge.results import CaptureResult, MemoryRef, Message, RecalledMemory, RecallResult, WriteResult
from bridge.operations import (
    Approve, Capture, Forget, ForgetSubject, ForkSession, Inject, IssueGrant, Operation, Promote, QueryAudit, Recall,
    Remember, RevokeGrant, RevokeManifest, StartSession, WriteBack,
)
from bridge.policy import Policy, PolicyConfig, Role
from bridge.vocabulary import Kind, Purpose

__all__ = [
    "BridgeError", "VikingBridgeError", "InvalidInput", "ManifestError", "NotPermitted", "RecallIncomplete",
    "MemoryBridge", "SyncMemoryBridge", "open_bridge", "Limits", "CaptureResult", "MemoryRef", "Message", "RecalledMemory",
    "RecallResult", "WriteResult", "Policy", "PolicyConfig", "Role", "Kind", "Purpose", "Operation", "Recall",
    "Remember", "Capture", "Forget", "ForgetSubject", "Approve", "Promote", "IssueGrant", "RevokeGrant", "Inject",
    "RevokeManifest", "WriteBack", "QueryAudit", "StartSession", "ForkSession",
]
