// viking-bridge admin console: plain JS, no build step, no dependencies.
//
// Every call goes to this service's /api/v1 with the signed-in admin's own credential; the
// server decides everything. The credential lives in `state` (and, only if asked, this tab's
// sessionStorage). Everything shown is built with createElement/textContent, never HTML strings:
// memory content is attacker-controlled text (the CSP's Trusted Types rule enforces this too).
'use strict';

(function () {
  const STORE_KEY = 'viking-bridge-console-credential';
  const PAGES = ['approvals', 'grants', 'manifests', 'audit', 'scopes', 'readers'];
  const AUDIT_ACTIONS = ['approve', 'capture', 'denied', 'edit', 'forget', 'forget_subject', 'grant', 'guard_alarm', 'inject',
    'promote', 'quarantine', 'recall', 'recovered', 'reject', 'revoke', 'write'];
  const state = { kind: 'api_key', secret: null, me: null, approvalsCursor: null };

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
    $('signed-in-as').textContent = `Signed in as ${state.me.principal} (${roles})`;
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
    const params = { limit: 50, cursor: more ? state.approvalsCursor : null };
    const page = await api('GET', '/api/v1/approvals', params);
    state.approvalsCursor = page.next_cursor;
    $('approvals-more').hidden = !page.next_cursor;
    const rows = page.memories;
    const node = table('Pending memories awaiting your decision', ['Memory', 'Scope', 'Kind', 'Author', 'Content', 'Created', 'Actions'], rows, (m) => [
      m.memory_id, m.scope, m.kind, m.author, el('span', { class: 'content' }, m.content), when(m.created_at),
      el('span', { class: 'actions' },
        el('button', { type: 'button', 'aria-label': `Approve memory ${m.memory_id}`, onclick: () => run(() => decide(m, 'approve')) }, 'Approve'),
        el('button', { type: 'button', 'aria-label': `Reject memory ${m.memory_id}`, onclick: () => run(() => decide(m, 'reject')) }, 'Reject'),
        el('button', { type: 'button', 'aria-label': `Who can read memory ${m.memory_id}`, onclick: () => explain(m.scope, m.memory_id) }, 'Who can read')),
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

  async function loadAudit() {
    const data = new FormData($('audit-form'));
    const rows = await api('GET', '/api/v1/audit', {
      action: data.get('action'), memory_id: data.get('memory_id').trim(), since_seq: data.get('since_seq') || 0, limit: data.get('limit') || 100,
    });
    show('audit-out', table('Audit rows, newest first', ['Seq', 'Time', 'Actor', 'Action', 'Memories', 'Scopes', 'Grants', 'Detail'], rows, (e) => [
      String(e.seq), when(e.ts), e.actor, e.action,
      el('span', {}, ...e.memory_ids.map((id) => (e.scopes.length === 1
        ? el('button', { type: 'button', class: 'link', 'aria-label': `Who can read memory ${id}`, onclick: () => explain(e.scopes[0], id) }, id)
        : el('span', {}, id, ' ')))),
      e.scopes.join(' '), e.grant_ids.join(' '), el('code', {}, JSON.stringify(e.detail)),
    ]));
    announce(`${rows.length} audit ${rows.length === 1 ? 'row' : 'rows'} match.`);
  }

  async function loadScopes() {
    const counts = await api('GET', '/api/v1/admin/scopes');
    show('scopes-out', table('Memories per scope of your tenant', ['Scope', 'Visibility', 'Active', 'Pending', 'Superseded'], counts, (c) => [
      c.scope, c.visibility, String(c.active) + (c.capped ? '+' : ''), String(c.pending), String(c.superseded),
    ]));
    announce(`${counts.length} ${counts.length === 1 ? 'scope' : 'scopes'} hold memories.`);
  }

  function explain(scope, memoryId) {
    $('readers-scope').value = scope;
    $('readers-memory').value = memoryId;
    go('readers');
  }

  async function loadReaders() {
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

  const LOADERS = {
    approvals: () => loadApprovals(false), grants: loadGrants, manifests: loadManifests, audit: loadAudit, scopes: loadScopes, readers: loadReaders,
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
    submit('audit-form', loadAudit);
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
