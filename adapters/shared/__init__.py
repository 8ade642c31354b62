"""Plumbing every adapter may share: the HTTP layer (`http`), the record envelope remote stores
carry (`envelope`), signed list cursors (`cursor`) and the embedders (`embedding`).

Nothing here knows a scope's meaning or decides who may see what; each module only does the
one mechanical job its name says, the same way for every backend.
"""
