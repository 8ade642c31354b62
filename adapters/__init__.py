"""Where memories live: the backend protocol and the built-in adapters (local, postgres, viking,
openviking), with the plumbing they share in `adapters.shared`.

Adapters never decide who may see what; they execute exactly the ScopeSet they are given.
"""

from adapters.base import (
    Capabilities,
    CaptureReceipt,
    ConversationBackend,
    ConversationMessage,
    Hit,
    ListPage,
    MemoryBackend,
    MemoryPatch,
    NewMemory,
    Provenance,
    SearchQuery,
    SearchResult,
    Status,
    StoredMemory,
)
from adapters.errors import BackendError, BackendMisconfigured, BackendConflict, CorruptRecord, EmbedderMismatch, EmptyScopeError, InvalidRequest, BackendNotFound, NotSent, PermissionDenied, BackendRateLimited, RetryLater, BackendUnavailable, UnsupportedFilter, WrongContext
from adapters.scopes import EmptyScopeSetError, ScopeEntry, ScopeKey, ScopeSet, Visibility

__all__ = [name for name in dir() if not name.startswith("_")]
