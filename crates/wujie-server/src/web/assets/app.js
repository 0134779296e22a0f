// Keeps an issue page current: follows /issues/KEY/live, a server-sent event stream of HTML
// fragments the server rendered (and escaped) itself, and puts each where it belongs. The page
// as served is complete without this script.
(function () {
  'use strict';

  function human(ms) {
    var s = Math.floor(ms / 1000);
    if (s < 1) return Math.max(0, ms) + ' ms';
    if (s < 60) return (ms / 1000).toFixed(1) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }

  function tickElapsed() {
    var now = Date.now();
    document.querySelectorAll('.elapsed[data-started]').forEach(function (el) {
      var start = Date.parse(el.dataset.started);
      if (!isNaN(start)) el.textContent = human(now - start);
    });
  }
  setInterval(tickElapsed, 1000);

  var issue = document.getElementById('issue');
  if (!issue || !window.EventSource) return;
  var state = document.getElementById('live-state');

  // Per run, the keys of the entries shown: an entry stored while the page was read may
  // arrive once more.
  var shown = {};
  function keysOf(runId, list) {
    if (!shown[runId]) {
      shown[runId] = new Set();
      list.querySelectorAll(':scope > li[data-key]').forEach(function (li) {
        shown[runId].add(li.dataset.key);
      });
    }
    return shown[runId];
  }

  function replace(id, html) {
    var el = document.getElementById(id);
    if (el) el.outerHTML = html;
  }

  var url = '/issues/' + encodeURIComponent(issue.dataset.key) + '/live?after=' +
    encodeURIComponent(issue.dataset.feedAfter);
  var source = new EventSource(url);
  source.addEventListener('open', function () {
    state.textContent = 'Live';
  });
  // A lost connection (the server restarting) is retried by the EventSource itself, which
  // resumes after the last event it got; one it gave up on says so.
  source.addEventListener('error', function () {
    if (issue.dataset.live === 'ended') return;
    issue.dataset.live = 'off';
    state.textContent = source.readyState === EventSource.CLOSED
      ? 'Not live: reload the page to follow the issue again.'
      : 'Reconnecting…';
  });
  // The browser's session ended: the server says why, with a login that comes back here.
  source.addEventListener('ended', function (e) {
    source.close();
    issue.dataset.live = 'ended';
    state.textContent = '';
    state.insertAdjacentHTML('afterend', JSON.parse(e.data).html);
  });
  source.addEventListener('live', function () {
    issue.dataset.live = 'on';
    state.textContent = 'Live';
  });
  source.addEventListener('message', function (e) {
    var d = JSON.parse(e.data);
    var section = document.getElementById('run-' + d.run);
    if (!section) return;
    var list = section.querySelector('.transcript');
    var keys = keysOf(d.run, list);
    if (keys.has(d.key)) return;
    keys.add(d.key);
    list.insertAdjacentHTML('beforeend', d.html);
  });
  source.addEventListener('run', function (e) {
    var d = JSON.parse(e.data);
    if (!document.getElementById('run-' + d.run) && d.section) {
      var none = document.getElementById('no-runs');
      if (none) none.remove();
      document.getElementById('runs').insertAdjacentHTML('beforeend', d.section);
    } else {
      replace('run-head-' + d.run, d.head);
    }
    replace('issue-usage', d.issue_usage);
  });
  source.addEventListener('comment', function (e) {
    var d = JSON.parse(e.data);
    if (!document.getElementById('comment-' + d.id)) {
      document.getElementById('comments').insertAdjacentHTML('beforeend', d.html);
    }
  });
  source.addEventListener('status', function (e) {
    var d = JSON.parse(e.data);
    replace('issue-status', d.badge);
    replace('issue-actions', d.actions);
  });
  source.addEventListener('edited', function (e) {
    var d = JSON.parse(e.data);
    if (d.title !== null) document.getElementById('issue-title').textContent = d.title;
    if (d.description !== null) document.getElementById('issue-description').innerHTML = d.description;
  });
  source.addEventListener('reload', function () {
    location.reload();
  });
})();
