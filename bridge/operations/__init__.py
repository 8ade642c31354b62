"""Every operation of the bridge as data (pattern: LangGraph's GetOp/PutOp/SearchOp).

Each operation is a frozen dataclass validated at construction: types, enums, id grammar,
references, metadata and text encodability are checked in `__post_init__` (an `InvalidInput`
naming the field); size limits, which are configuration, in `check(limits)`. None of them has
a field that names the caller: identity is the other argument of `MemoryBridge.execute`, built
from a credential, so a door that maps a request body onto an operation cannot smuggle one in.
Fields that name a *target* (a grantee, a child agent, a subject) are decided by the policy.

One module per concern, named like its handler (`bridge/handlers/<same name>.py`) and, where it
has one, its policy (`bridge/policy/<same name>.py`). This package's namespace holds every
operation, so `from bridge import operations as ops; ops.Remember(...)` reaches all of them.
"""

from __future__ import annotations

from bridge.operations.base import Operation
from bridge.operations.recall import Recall
from bridge.operations.memories import Capture, Remember
from bridge.operations.lifecycle import Approve, Forget, Promote
from bridge.operations.erasure import ForgetSubject
from bridge.operations.expiry import PurgeExpired
from bridge.operations.grants import IssueGrant, RevokeGrant
from bridge.operations.injection import Inject, RevokeManifest, WriteBack
from bridge.operations.audit import QueryAudit
from bridge.operations.sessions import ForkSession, StartSession
from bridge.operations.reads import EditMemory, FindByKey, FindMemory, GetMemory, MemoryHistory, InjectContext, ListGrants, ListMemories, PendingApprovals, Reject
from bridge.operations.sharing import AddTeamMember, RemoveTeamMember, SetTeamMembers, SetVisibleTo
from bridge.operations.admin import BrowseMemories, ScopeCounts, TenantDirectory, TenantGrants, TenantManifests, WhoCanRead
from bridge.operations.keys import IssueApiKey, ListApiKeys, RevokeApiKey
from bridge.operations.export import ExportMemories
from bridge.operations.roles import RoleInject
from bridge.operations.fields import RESERVED_METADATA_PREFIX

__all__ = [
    "Operation", "Recall", "Remember", "Capture", "Forget", "Approve", "Promote", "ForgetSubject",
    "PurgeExpired", "IssueGrant", "RevokeGrant", "Inject", "RevokeManifest", "WriteBack",
    "QueryAudit", "StartSession", "ForkSession", "GetMemory", "FindMemory", "MemoryHistory", "FindByKey", "ListMemories",
    "PendingApprovals", "EditMemory", "Reject", "ListGrants", "InjectContext", "SetVisibleTo",
    "SetTeamMembers", "AddTeamMember", "RemoveTeamMember", "TenantGrants", "TenantManifests",
    "ScopeCounts", "WhoCanRead", "ExportMemories", "RoleInject", "RESERVED_METADATA_PREFIX",
    "BrowseMemories", "TenantDirectory", "ListApiKeys", "IssueApiKey", "RevokeApiKey",
]
