// viking-bridge admin console: plain JS, no build step, no dependencies.
//
// Every call goes to this service's /api/v1 with the signed-in admin's own credential; the
// server decides everything. The credential lives in `state` (and, only if asked, this tab's
// sessionStorage). Everything shown is built with createElement/textContent, never HTML strings:
// memory content is attacker-controlled text (the CSP's Trusted Types rule enforces this too).
'use strict';

(function () {
  const STORE_KEY = 'viking-bridge-console-credential';
  const PAGES = ['approvals', 'memories', 'scopes', 'grants', 'manifests', 'audit', 'readers', 'keys', 'directory'];
  const AUDIT_ACTIONS = ['api_key', 'approve', 'capture', 'denied', 'edit', 'expired', 'export', 'forget', 'forget_subject', 'grant',
    'guard_alarm', 'inject', 'inspect', 'migrate', 'promote', 'quarantine', 'recall', 'recovered', 'reject', 'revoke', 'share', 'team', 'write'];
  // audit paging: `auditPages` holds the before_seq of each page shown so far (null = the newest)
  const state = { kind: 'api_key', secret: null, me: null, approvalsCursor: null, memoriesCursor: null, auditPages: [null], auditOldest: null };

  // The newest load of a paged view wins: an older load whose answer arrives after it is dropped,
  // so a slow page can never overwrite (or append to) the page asked for after it, nor leave its
  // cursor behind for "Load more" / "Older rows".
  const loads = {};
  function newestLoad(view) {
    const ticket = (loads[view] || 0) + 1;
    loads[view] = ticket;
    return () => loads[view] === ticket;
  }

  const $ = (id) => document.getElementById(id);

  // -- building DOM safely -------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === 'onclick') node.addEventListener('click', value);
      else node.setAttribute(name, value === true ? '' : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }

  function when(ts) {
    if (ts === null || ts === undefined) return '';
    return new Date(ts * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  }

  // A time in a table cell: one line, never wrapped
  function stamp(ts) {
    return el('span', { class: 'when' }, when(ts));
  }

  // A data table: caption, column headers with scope=col, one row per item.
  function table(caption, columns, items, cells) {
    const head = el('tr', {}, ...columns.map((c) => el('th', { scope: 'col' }, c)));
    const rows = items.map((item) => el('tr', {}, ...cells(item).map((c, n) => (n === 0 ? el('th', { scope: 'row' }, c) : el('td', {}, c)))));
    return el('table', {}, el('caption', {}, caption), el('thead', {}, head), el('tbody', {}, ...rows));
  }

  function show(outId, node) {
    $(outId).replaceChildren(node);
  }

  function announce(message) {
    $('status').textContent = message;
  }

  function clearError() {
    $('error').hidden = true;
    $('error').textContent = '';
  }

  function fail(err) {
    const box = $('error');
    box.textContent = err instanceof ApiError ? `${err.status} ${err.title}: ${err.detail}` : `Error: ${err.message || err}`;
    box.hidden = false;
    announce('');
  }

  // -- the API, with the admin's own credential ------------------------------------------------
  class ApiError extends Error {
    constructor(status, problem) {
      super(problem.detail || problem.title || `HTTP ${status}`);
      this.status = status;
      this.title = problem.title || 'Request failed';
      this.detail = problem.detail || '';
    }
  }

  async function api(method, path, params, body) {
    if (!state.secret) throw new Error('sign in first');
    const url = new URL(path, window.location.origin);
    for (const [k, v] of Object.entries(params || {})) {
      if (v !== '' && v !== null && v !== undefined) url.searchParams.set(k, String(v));
    }
    const headers = { Accept: 'application/json' };
    if (state.kind === 'bearer') headers.Authorization = `Bearer ${state.secret}`;
    else headers['X-API-Key'] = state.secret;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(url, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'omit', cache: 'no-store', redirect: 'error', referrerPolicy: 'no-referrer',
    });
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (e) { data = { title: 'Unreadable answer', detail: text.slice(0, 200) }; }
    if (!response.ok) throw new ApiError(response.status, data || {});
    return data;
  }

  async function run(action) {
    clearError();
    try { await action(); } catch (err) { fail(err); }
  }

  // -- sign in / out ----------------------------------------------------------------------------
  async function signIn(kind, secret, remember) {
    state.kind = kind;
    state.secret = secret;
    try {
      state.me = await api('GET', '/api/v1/admin/whoami');
    } catch (err) {
      state.secret = null;
      throw err;
    }
    if (remember) sessionStorage.setItem(STORE_KEY, JSON.stringify({ kind, secret }));
    const roles = state.me.roles.length ? state.me.roles.join(', ') : 'no roles';
    // where this tenant's memories live: on a routed service, the backend its routing table names
    const home = state.me.memory_backend ? `; memories on ${state.me.memory_backend}` : '';
    $('signed-in-as').textContent = `Signed in as ${state.me.principal} (${roles})${home}`;
    $('signed-in-as').hidden = false;
    $('sign-out').hidden = false;
    $('pages').hidden = false;
    $('page-signin').hidden = true;
    if (!state.me.roles.includes('admin') && !state.me.roles.includes('approver')) {
      announce('This console is for tenant admins and approvers: the service will refuse what your credential may not do.');
    }
    go(PAGES.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'approvals');
  }

  function signOut() {
    state.secret = null;
    state.me = null;
    sessionStorage.removeItem(STORE_KEY);
    for (const p of PAGES) { $(`page-${p}`).hidden = true; $(`${p}-out`).replaceChildren(); }
    $('key-issued').replaceChildren();
    $('key-issued').hidden = true;
    $('pages').hidden = true;
    $('signed-in-as').hidden = true;
    $('sign-out').hidden = true;
    $('page-signin').hidden = false;
    $('credential').value = '';
    clearError();
    announce('Signed out; the credential was forgotten.');
  }

  // -- navigation ---------------------------------------------------------------------------------
  function go(page) {
    for (const p of PAGES) $(`page-${p}`).hidden = p !== page;
    for (const link of document.querySelectorAll('#pages a')) {
      if (link.dataset.page === page) link.setAttribute('aria-current', 'page');
      else link.removeAttribute('aria-current');
    }
    if (location.hash !== `#${page}`) history.replaceState(null, '', `#${page}`);
    $(`${page}-title`).focus({ preventScroll: true });
    const load = LOADERS[page];
    if (load) run(load);
  }

  // -- pages ----------------------------------------------------------------------------------------
  async function loadApprovals(more) {
    const current = newestLoad('approvals');
    const params = { limit: 50, cursor: more ? state.approvalsCursor : null };
    const page = await api('GET', '/api/v1/approvals', params);
    if (!current()) return;
    state.approvalsCursor = page.next_cursor;
    $('approvals-more').hidden = !page.next_cursor;
    const rows = page.memories;
    const node = table('Pending memories awaiting your decision', ['Memory', 'Scope', 'Kind', 'Author', 'Content', 'Created', 'Actions'], rows, (m) => [
      m.memory_id, m.scope, m.kind, m.author, el('span', { class: 'content' }, m.content), stamp(m.created_at),
      el('span', { class: 'actions' },
        el('button', { type: 'button', 'aria-label': `Approve memory ${m.memory_id}`, onclick: () => run(() => decide(m, 'approve')) }, 'Approve'),
        el('button', { type: 'button', class: 'danger', 'aria-label': `Reject memory ${m.memory_id}`, onclick: () => run(() => rejectAfterConfirm(m)) }, 'Reject (delete)…'),
        el('button', { type: 'button', class: 'secondary', 'aria-label': `Who can read memory ${m.memory_id}`, onclick: () => explain(m.scope, m.memory_id) }, 'Who can read')),
    ]);
    if (more) {
      $('approvals-out').append(node);
      const total = $('approvals-out').querySelectorAll('tbody tr').length;
      announce(`Loaded ${rows.length} more; ${total} pending memories shown${page.next_cursor ? ', more remain' : ''}.`);
      return;
    }
    show('approvals-out', node);
    const tail = page.next_cursor ? ' (more remain: Load more)' : '';
    announce(rows.length ? `${rows.length} pending ${rows.length === 1 ? 'memory' : 'memories'} awaiting approval${tail}.` : 'Nothing awaits your approval.');
  }

  // Rejecting deletes the proposal for good: the admin confirms it, naming the memory.
  async function rejectAfterConfirm(memory) {
    const preview = memory.content.length > 80 ? `${memory.content.slice(0, 80)}…` : memory.content;
    if (!window.confirm(`Reject and delete pending memory ${memory.memory_id}?\n\n"${preview}"\n\nThis cannot be undone.`)) {
      announce(`Kept memory ${memory.memory_id}: nothing was rejected.`);
      return;
    }
    await decide(memory, 'reject');
  }

  async function decide(memory, verb) {
    await api('POST', `/api/v1/memories/${encodeURIComponent(memory.memory_id)}/${verb}`, { scope: memory.scope });
    await loadApprovals(false);
    announce(`${verb === 'approve' ? 'Approved' : 'Rejected'} memory ${memory.memory_id}.`);
  }

  async function loadGrants() {
    const grants = await api('GET', '/api/v1/admin/grants', { include_inactive: $('grants-inactive').checked });
    const now = Date.now() / 1000;
    show('grants-out', table('Grants of your tenant', ['Grant', 'Grantee', 'Agent', 'Scope', 'Reason', 'Issued by', 'Expires', 'State', 'Actions'], grants, (g) => {
      const live = g.revoked_at === null && g.expires_at > now;
      return [g.grant_id, g.grantee_user_id, g.grantee_agent_id || 'any', g.scope, g.reason, g.issued_by, when(g.expires_at),
        live ? 'in force' : (g.revoked_at !== null ? `revoked ${when(g.revoked_at)}` : 'expired'),
        live ? el('button', { type: 'button', 'aria-label': `Revoke grant ${g.grant_id}`, onclick: () => run(() => revokeGrant(g.grant_id)) }, 'Revoke') : ''];
    }));
    announce(`${grants.length} ${grants.length === 1 ? 'grant' : 'grants'} shown.`);
  }

  async function issueGrant(form) {
    const data = new FormData(form);
    const body = {
      grantee_user_id: data.get('grantee_user_id').trim(), scope: data.get('scope').trim(),
      ttl_seconds: Math.round(Number(data.get('hours')) * 3600), reason: data.get('reason').trim(),
    };
    const agent = data.get('grantee_agent_id').trim();
    if (agent) body.grantee_agent_id = agent;
    const grant = await api('POST', '/api/v1/grants', undefined, body);
    form.reset();
    await loadGrants();
    announce(`Issued grant ${grant.grant_id}: ${grant.grantee_user_id} may read ${grant.scope} until ${when(grant.expires_at)}.`);
  }

  async function revokeGrant(grantId) {
    await api('DELETE', `/api/v1/grants/${encodeURIComponent(grantId)}`);
    await loadGrants();
    announce(`Revoked grant ${grantId}.`);
  }

  async function loadManifests() {
    const manifests = await api('GET', '/api/v1/admin/manifests');
    show('manifests-out', table('Live injection manifests of your tenant', ['Manifest', 'User', 'From agent', 'To agent', 'Task', 'Depth', 'Memories', 'Expires', 'Chain', 'Actions'], manifests, (m) => [
      m.manifest_id, m.user_id, m.parent_agent_id, m.child_agent_id, m.task, m.depth, String(m.memory_count), when(m.expires_at),
      m.chain_live ? 'live' : 'dead (a source ended)',
      el('button', { type: 'button', 'aria-label': `Revoke manifest ${m.manifest_id}`, onclick: () => run(() => revokeManifest(m.manifest_id)) }, 'Revoke'),
    ]));
    announce(`${manifests.length} live ${manifests.length === 1 ? 'manifest' : 'manifests'}.`);
  }

  async function revokeManifest(manifestId) {
    await api('DELETE', `/api/v1/manifests/${encodeURIComponent(manifestId)}`);
    await loadManifests();
    announce(`Revoked manifest ${manifestId} and every manifest derived from it.`);
  }

  // One line per row: the detail's keys and values, shortened; the whole JSON on demand.
  function detailSummary(detail) {
    const parts = Object.entries(detail || {}).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`);
    const line = parts.join(' · ');
    return line.length > 120 ? `${line.slice(0, 119)}…` : line;
  }

  function detailCell(e) {
    const extra = [];
    if (e.scopes.length) extra.push(`scopes: ${e.scopes.join(', ')}`);
    if (e.grant_ids.length) extra.push(`grants: ${e.grant_ids.join(', ')}`);
    const summary = [detailSummary(e.detail), ...extra].filter(Boolean).join(' · ') || '—';
    const full = { ...e.detail, scopes: e.scopes, grant_ids: e.grant_ids, session_id: e.session_id };
    return el('details', { class: 'detail' }, el('summary', {}, summary), el('pre', {}, JSON.stringify(full, null, 2)));
  }

  function filterByActor(actor) {
    $('audit-actor').value = actor;
    state.auditPages = [null];
    go('audit');
  }

  function auditHistory(memoryId) {
    $('audit-action').value = '';
    $('audit-actor').value = '';
    $('audit-memory').value = memoryId;
    state.auditPages = [null];
    go('audit');
  }

  async function loadAudit() {
    const current = newestLoad('audit');
    const data = new FormData($('audit-form'));
    const before = state.auditPages[state.auditPages.length - 1];
    const limit = Number(data.get('limit')) || 50;
    // no paging from a page that is being replaced: its oldest seq is not the new page's
    $('audit-older').disabled = true;
    $('audit-newer').disabled = true;
    $('audit-position').textContent = 'loading…';
    let rows;
    try {
      rows = await api('GET', '/api/v1/audit', {
        action: data.get('action'), actor: data.get('actor').trim(), memory_id: data.get('memory_id').trim(), limit, before_seq: before,
      });
    } catch (err) {
      if (current()) {
        $('audit-position').textContent = 'not loaded';
        $('audit-newer').disabled = state.auditPages.length === 1;
      }
      throw err;
    }
    if (!current()) return;
    state.auditOldest = rows.length ? rows[rows.length - 1].seq : null;
    const node = table('Audit rows, newest first', ['Seq', 'Time', 'Actor', 'Action', 'Memories', 'Detail'], rows, (e) => [
      String(e.seq), stamp(e.ts),
      el('button', { type: 'button', class: 'link', 'aria-label': `Only rows of ${e.actor}`, onclick: () => filterByActor(e.actor) }, e.actor),
      e.action,
      el('span', { class: 'ids' }, ...e.memory_ids.slice(0, 3).map((id) => (e.scopes.length === 1
        ? el('button', { type: 'button', class: 'link', title: id, 'aria-label': `Who can read memory ${id}`, onclick: () => explain(e.scopes[0], id) }, id)
        : el('code', { title: id }, id))), e.memory_ids.length > 3 ? ` +${e.memory_ids.length - 3} more` : null),
      detailCell(e),
    ]);
    node.classList.add('audit');
    show('audit-out', node);
    const page = state.auditPages.length;
    $('audit-newer').disabled = page === 1;
    $('audit-older').disabled = rows.length < limit;
    $('audit-position').textContent = rows.length ? `page ${page}: seq ${rows[0].seq} to ${state.auditOldest}` : `page ${page}`;
    announce(`${rows.length} audit ${rows.length === 1 ? 'row' : 'rows'} match${page > 1 ? ` (page ${page})` : ''}.`);
  }

  function auditPage(step) {
    if (step > 0 && state.auditOldest !== null) state.auditPages.push(state.auditOldest);
    if (step < 0 && state.auditPages.length > 1) state.auditPages.pop();
    return loadAudit();
  }

  async function loadScopes() {
    const counts = await api('GET', '/api/v1/admin/scopes');
    show('scopes-out', table('Memories per scope of your tenant', ['Scope', 'Visibility', 'Active', 'Pending', 'Superseded', 'Actions'], counts, (c) => [
      c.scope, c.visibility, String(c.active) + (c.capped ? '+' : ''), String(c.pending), String(c.superseded),
      el('button', { type: 'button', class: 'secondary', 'aria-label': `Browse memories of ${c.scope}`, onclick: () => browse(c.scope) }, 'Browse'),
    ]));
    $('memories-scopes').replaceChildren(...counts.map((c) => el('option', { value: c.scope })));
    announce(`${counts.length} ${counts.length === 1 ? 'scope' : 'scopes'} hold memories.`);
  }

  function explain(scope, memoryId) {
    $('readers-scope').value = scope;
    $('readers-memory').value = memoryId;
    go('readers');
  }

  async function loadReaders() {
    $('readers-out').replaceChildren();  // a refused or missing memory must not keep the previous one's answer
    const scope = $('readers-scope').value.trim();
    const memoryId = $('readers-memory').value.trim();
    if (!scope || !memoryId) {
      $('readers-out').replaceChildren();
      announce('Give a scope and a memory id to see who can read it.');
      return;
    }
    const r = await api('GET', `/api/v1/admin/memories/${encodeURIComponent(memoryId)}/readers`, { scope });
    const facts = el('dl', { class: 'facts' },
      el('dt', {}, 'Memory'), el('dd', {}, r.memory_id), el('dt', {}, 'Scope'), el('dd', {}, r.scope),
      el('dt', {}, 'Kind'), el('dd', {}, r.kind), el('dt', {}, 'Status'), el('dd', {}, r.status),
      el('dt', {}, 'Author'), el('dd', {}, r.author), el('dt', {}, 'Never'), el('dd', {}, r.never));
    const readers = table(`Who can read ${r.memory_id}`, ['Who', 'Why', 'Through', 'Until', 'Grant or manifest'], r.readers, (x) => [
      x.who, x.why, x.via, x.until ? when(x.until) : '', x.ref || '',
    ]);
    const out = [facts, readers];
    if (!r.complete) out.push(el('p', { class: 'warning' }, 'Incomplete: more grants or manifests exist than were weighed.'));
    $('readers-out').replaceChildren(...out);
    announce(`${r.readers.length} reader ${r.readers.length === 1 ? 'rule' : 'rules'} for memory ${r.memory_id}.`);
  }

  // -- memories: browse one scope, optionally by text --------------------------------------------
  function browse(scope) {
    $('memories-scope').value = scope;
    $('memories-text').value = '';
    go('memories');
  }

  async function loadMemories(more) {
    const current = newestLoad('memories');
    const data = new FormData($('memories-form'));
    const scope = data.get('scope').trim();
    if (!more) state.memoriesCursor = null;
    if (!scope) {
      $('memories-out').replaceChildren();
      $('memories-more').hidden = true;
      if (!$('memories-scopes').children.length) {
        const counts = await api('GET', '/api/v1/admin/scopes');
        $('memories-scopes').replaceChildren(...counts.map((c) => el('option', { value: c.scope })));
      }
      announce('Give a scope (Scopes lists them) to browse its memories.');
      return;
    }
    const page = await api('GET', '/api/v1/admin/memories', {
      scope, text: data.get('text').trim(), status: data.get('status'), cursor: more ? state.memoriesCursor : null, limit: 50,
    });
    if (!current()) return;
    state.memoriesCursor = page.next_cursor;
    $('memories-more').hidden = !page.next_cursor;
    const node = table(`Memories of ${scope}`, ['Memory', 'Kind', 'Status', 'Author', 'Content', 'Updated', 'Actions'], page.memories, (m) => [
      m.memory_id, m.kind, m.status, m.author, el('span', { class: 'content' }, m.content), stamp(m.updated_at),
      el('span', { class: 'actions' },
        el('button', { type: 'button', class: 'secondary', 'aria-label': `Who can read memory ${m.memory_id}`, onclick: () => explain(m.scope, m.memory_id) }, 'Who can read'),
        el('button', { type: 'button', class: 'secondary', 'aria-label': `History of memory ${m.memory_id}`, onclick: () => auditHistory(m.memory_id) }, 'History')),
    ]);
    if (more) $('memories-out').append(node); else show('memories-out', node);
    const shown = $('memories-out').querySelectorAll('tbody tr').length;
    announce(`${shown} ${shown === 1 ? 'memory' : 'memories'} shown${page.next_cursor ? ' (more remain: Load more)' : ''}.`);
  }

  // -- API keys ------------------------------------------------------------------------------------
  async function loadKeys() {
    const keys = await api('GET', '/api/v1/admin/keys', { include_revoked: $('keys-revoked').checked });
    show('keys-out', table('API keys of your tenant', ['Key id', 'User', 'Agent', 'Departments', 'Workspace', 'Roles', 'Label', 'Created', 'State', 'Actions'], keys, (k) => [
      k.key_id, k.user_id, k.agent_id, k.department_ids.join(', '), k.workspace_id || '', k.roles.join(', ') || 'member', k.label, stamp(k.created_at),
      k.revoked_at === null ? 'active' : `revoked ${when(k.revoked_at)}`,
      k.revoked_at === null ? el('button', { type: 'button', class: 'danger', 'aria-label': `Revoke key ${k.key_id}`, onclick: () => run(() => revokeKey(k)) }, 'Revoke…') : '',
    ]));
    announce(`${keys.length} ${keys.length === 1 ? 'key' : 'keys'} shown.`);
  }

  async function issueKey(form) {
    const data = new FormData(form);
    const body = {
      for_user: data.get('user_id').trim(), for_agent: data.get('agent_id').trim() || 'assistant',
      for_departments: data.get('department_ids').split(',').map((d) => d.trim()).filter(Boolean),
      with_roles: data.getAll('roles'), label: data.get('label').trim(),
    };
    const workspace = data.get('workspace_id').trim();
    if (workspace) body.for_workspace = workspace;
    const issued = await api('POST', '/api/v1/admin/keys', undefined, body);
    form.reset();
    const box = $('key-issued');
    box.replaceChildren(
      el('p', {}, `Key ${issued.record.key_id} for ${issued.record.user_id}@${issued.record.agent_id}. Copy it now: it is shown once and stored nowhere.`),
      el('div', { class: 'field' }, el('label', { for: 'key-secret' }, 'The new API key'),
        el('input', { id: 'key-secret', readonly: true, value: issued.key, spellcheck: 'false', autocomplete: 'off' })),
      el('button', { type: 'button', class: 'secondary', onclick: () => { box.hidden = true; box.replaceChildren(); } }, 'I have copied it'));
    box.hidden = false;
    await loadKeys();
    announce(`Issued key ${issued.record.key_id} for ${issued.record.user_id}; copy it now, it is shown once.`);
  }

  async function revokeKey(k) {
    if (!window.confirm(`Revoke key ${k.key_id} of ${k.user_id}@${k.agent_id}? Whoever uses it is refused from the next request on.`)) {
      announce(`Kept key ${k.key_id}.`);
      return;
    }
    await api('DELETE', `/api/v1/admin/keys/${encodeURIComponent(k.key_id)}`);
    await loadKeys();
    announce(`Revoked key ${k.key_id}.`);
  }

  // -- directory -------------------------------------------------------------------------------------
  async function loadDirectory() {
    const d = await api('GET', '/api/v1/admin/directory');
    const tenant = state.me.tenant_id;
    const users = table('Users and their agents', ['User', 'Agents', 'Roles (on keys)', 'Departments', 'Workspaces', 'Active keys', 'Last seen'], d.users, (u) => [
      u.user_id,
      el('span', { class: 'ids' }, ...u.agents.map((a) => el('button', { type: 'button', class: 'link', 'aria-label': `Audit rows of ${tenant}/${u.user_id}@${a}`, onclick: () => filterByActor(`${tenant}/${u.user_id}@${a}`) }, a))),
      u.roles.join(', '), u.department_ids.join(', '), u.workspace_ids.join(', '), String(u.active_keys), u.last_seen ? when(u.last_seen) : 'not in the recent audit rows',
    ]);
    const teams = table('Teams', ['Team', 'Member agents'], d.teams, (t) => [t.team_id, t.members.join(', ') || '(no members)']);
    $('directory-out').replaceChildren(users, teams, el('p', { class: 'note' }, `Actors taken from the newest ${d.audit_rows_read} audit rows.`));
    announce(`${d.users.length} ${d.users.length === 1 ? 'user' : 'users'}, ${d.teams.length} ${d.teams.length === 1 ? 'team' : 'teams'}.`);
  }

  const LOADERS = {
    approvals: () => loadApprovals(false), memories: () => loadMemories(false), grants: loadGrants, manifests: loadManifests, audit: loadAudit,
    scopes: loadScopes, readers: loadReaders, keys: loadKeys, directory: loadDirectory,
  };

  // -- wiring ------------------------------------------------------------------------------------------
  function submit(id, handler) {
    $(id).addEventListener('submit', (event) => { event.preventDefault(); run(() => handler(event.currentTarget)); });
  }

  document.addEventListener('DOMContentLoaded', () => {
    const select = $('audit-action');
    for (const action of AUDIT_ACTIONS) select.append(el('option', { value: action }, action));
    for (const p of PAGES) $(`${p}-title`).setAttribute('tabindex', '-1');
    submit('signin-form', (form) => {
      const kind = form.querySelector('input[name=kind]:checked').value;
      const secret = $('credential').value.trim();
      if (!secret) throw new Error('enter an API key or a token');
      return signIn(kind, secret, $('remember').checked);
    });
    submit('grant-form', issueGrant);
    submit('audit-form', () => { state.auditPages = [null]; return loadAudit(); });
    submit('memories-form', () => loadMemories(false));
    submit('key-form', issueKey);
    $('audit-older').addEventListener('click', () => run(() => auditPage(1)));
    $('audit-newer').addEventListener('click', () => run(() => auditPage(-1)));
    $('memories-more').addEventListener('click', () => run(() => loadMemories(true)));
    $('keys-refresh').addEventListener('click', () => run(loadKeys));
    $('keys-revoked').addEventListener('change', () => run(loadKeys));
    $('directory-refresh').addEventListener('click', () => run(loadDirectory));
    submit('readers-form', loadReaders);
    $('sign-out').addEventListener('click', signOut);
    $('approvals-refresh').addEventListener('click', () => run(() => loadApprovals(false)));
    $('approvals-more').addEventListener('click', () => run(() => loadApprovals(true)));
    $('grants-refresh').addEventListener('click', () => run(loadGrants));
    $('grants-inactive').addEventListener('change', () => run(loadGrants));
    $('manifests-refresh').addEventListener('click', () => run(loadManifests));
    $('scopes-refresh').addEventListener('click', () => run(loadScopes));
    for (const link of document.querySelectorAll('#pages a')) {
      link.addEventListener('click', (event) => { event.preventDefault(); clearError(); go(link.dataset.page); });
    }
    const kept = sessionStorage.getItem(STORE_KEY);
    if (kept) {
      try {
        const { kind, secret } = JSON.parse(kept);
        run(() => signIn(kind, secret, true));
      } catch (e) { sessionStorage.removeItem(STORE_KEY); }
    }
  });
}());
