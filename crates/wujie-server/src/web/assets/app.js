// Keeps an issue page, the issue list and the board current: follows the issue's live feed
// (the list's: every issue's), a server-sent event stream of HTML fragments the server
// rendered (and escaped) itself, and puts each where it belongs. The feed comes through
// feed.js, which keeps one connection for all of the browser's pages. The page as served is
// complete without this script.
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
  var list = document.getElementById('issue-list');
  var board = document.getElementById('issue-board');
  // The element whose feed the page follows, and that says whether it is live.
  var followed = issue || list || board;
  if (!followed || !window.EventSource || !window.Worker) return;
  var state = document.getElementById('live-state');
  var on = {};
  if (issue) followIssue(); else followList();

  function replace(id, html) {
    var el = document.getElementById(id);
    if (el) el.outerHTML = html;
  }

  // An issue's row (the list) or card (the board) as it is now, where it belongs: a row
  // the list's filters would not show is left out.
  function followList() {
    // Newest first, as served: by the number in the key.
    function number(el) { return +el.id.slice(el.id.lastIndexOf('-') + 1); }
    function place(into, html, key) {
      var n = +key.slice(key.lastIndexOf('-') + 1);
      var after = [].find.call(into.children, function (li) { return number(li) < n; });
      if (after) after.insertAdjacentHTML('beforebegin', html); else into.insertAdjacentHTML('beforeend', html);
    }
    on.row = function (d) {
      var old = document.getElementById('issue-' + d.key);
      if (board) {
        var column = board.querySelector('.column[data-status="' + d.status + '"] ul');
        if (old && old.parentNode === column) {
          old.outerHTML = d.html;
        } else {
          if (old) old.remove();
          if (column) place(column, d.html, d.key);
        }
        board.querySelectorAll('.column').forEach(function (c) {
          c.querySelector('.count').textContent = c.querySelectorAll('li.issue').length;
        });
        return;
      }
      var wanted = list.dataset.statusFilter;
      if (wanted && wanted !== d.status) {
        if (old) old.remove();
      } else if (old) {
        old.outerHTML = d.html;
      } else if (list.dataset.searched === undefined) {
        place(list, d.html, d.key);
        var none = document.getElementById('no-issues');
        if (none) none.remove();
      }
    };
  }

  function followIssue() {
    // Per run, the keys of the entries shown: an entry stored while the page was read may
    // arrive once more.
    var shown = {};
    function keysOf(runId, list) {
      if (!shown[runId]) {
        shown[runId] = new Set();
        list.querySelectorAll(':scope > li[data-key]').forEach(function (li) {
          shown[runId].add(li.dataset.key);
          if (li.dataset.resultKey) shown[runId].add(li.dataset.resultKey);
        });
      }
      return shown[runId];
    }

    // Run ends and questions, told in a notice on the page (text, never HTML), and by the
    // browser too once the user allowed it; permission is asked only on a click of "Notify me".
    var notices = document.getElementById('notices');
    var notifyMe = document.getElementById('notify-me');
    // The runs whose end, and the questions ('run/key') that were shown or told: what arrives
    // again is not news. A run's section may come in with its first entries already in it.
    var over = new Set();
    var asked = new Set();
    document.querySelectorAll('#timeline .run').forEach(function (section) {
      if (!section.querySelector('.run-head .run-running')) over.add(section.dataset.run);
      section.querySelectorAll('.transcript > li.question[data-key]').forEach(function (li) {
        asked.add(section.dataset.run + '/' + li.dataset.key);
      });
    });
    function tell(text) {
      var notice = document.createElement('p');
      notice.className = 'notice';
      var words = document.createElement('span');
      words.textContent = text;
      var dismiss = document.createElement('button');
      dismiss.type = 'button';
      dismiss.className = 'secondary';
      dismiss.textContent = '×';
      dismiss.setAttribute('aria-label', 'Dismiss');
      dismiss.addEventListener('click', function () { notice.remove(); });
      notice.appendChild(words);
      notice.appendChild(dismiss);
      notices.appendChild(notice);
      if (window.Notification && Notification.permission === 'granted') {
        var title = issue.dataset.key + ': ' + document.getElementById('issue-title').textContent;
        try {
          new Notification(title, {body: text});
        } catch (e) {
          // Where pages may not make notifications themselves (Android), the notice is enough.
        }
      }
    }
    if (window.Notification && Notification.permission === 'default') {
      notifyMe.hidden = false;
      notifyMe.addEventListener('click', function () {
        Notification.requestPermission().then(function () { notifyMe.hidden = true; });
      });
    }

    on.message = function (d) {
      var section = document.getElementById('run-' + d.run);
      if (!section) return;
      if (d.question && !asked.has(d.run + '/' + d.key)) {
        asked.add(d.run + '/' + d.key);
        tell(d.question);
      }
      var list = section.querySelector('.transcript');
      var keys = keysOf(d.run, list);
      if (keys.has(d.key)) return;
      keys.add(d.key);
      var row = document.createElement('template');
      row.innerHTML = d.html;
      var entry = row.content.firstElementChild;
      // A tool's result goes into the row of the call just before it, as the server pairs
      // them when it renders the page.
      var call = list.lastElementChild;
      if (entry.classList.contains('tool_result') && call && call.classList.contains('tool_use') &&
          call.dataset.resultKey === undefined && call.dataset.tool === entry.dataset.tool) {
        call.querySelector('details').appendChild(entry.querySelector('.tool-result'));
        call.dataset.resultKey = d.key;
      } else {
        list.appendChild(entry);
      }
    };
    on.run = function (d) {
      if (!document.getElementById('run-' + d.run) && d.section) {
        var none = document.getElementById('no-runs');
        if (none) none.remove();
        document.getElementById('timeline').insertAdjacentHTML('beforeend', d.section);
      } else {
        replace('run-head-' + d.run, d.head);
      }
      replace('issue-usage', d.issue_usage);
      if (d.ended && !over.has(d.run)) {
        over.add(d.run);
        tell(d.ended);
      }
      if (d.code) on.code(d.code);
    };
    // A run's code as of its latest snapshot. The files the reader opened or closed stay so;
    // an older snapshot arriving again changes nothing.
    on.code = function (d) {
      var old = document.getElementById('run-code-' + d.run);
      if (!old) return;
      if (old.dataset.snapshot !== undefined && d.snapshot !== null && +old.dataset.snapshot > d.snapshot) return;
      var chosen = {};
      old.querySelectorAll('details[data-path]').forEach(function (el) {
        chosen[el.dataset.path] = el.open;
      });
      old.outerHTML = d.html;
      document.getElementById('run-code-' + d.run).querySelectorAll('details[data-path]').forEach(function (el) {
        if (Object.prototype.hasOwnProperty.call(chosen, el.dataset.path)) el.open = chosen[el.dataset.path];
      });
    };
    on.comment = function (d) {
      if (!document.getElementById('comment-' + d.id)) {
        document.getElementById('timeline').insertAdjacentHTML('beforeend', d.html);
      }
    };
    on.status = function (d) {
      replace('issue-status', d.badge);
      replace('issue-actions', d.actions);
      if (d.entry && !document.getElementById(d.entry_id)) {
        document.getElementById('timeline').insertAdjacentHTML('beforeend', d.entry);
      }
    };
    on.edited = function (d) {
      if (d.title !== null) document.getElementById('issue-title').textContent = d.title;
      if (d.description !== null) document.getElementById('issue-description').innerHTML = d.description;
    };
  }

  // '*' is the list's feed (every issue's changes).
  var key = issue ? issue.dataset.key : '*';
  var worker = window.SharedWorker
    ? new SharedWorker('/assets/feed.js', {name: 'wujie-feed'})
    : new Worker('/assets/feed.js');
  var port = worker.port || worker;
  port.onmessage = function (e) {
    var handle = on[e.data.type];
    if (handle) handle(e.data.data);
  };
  port.postMessage({follow: key, after: followed.dataset.feedAfter});
  window.addEventListener('pagehide', function () {
    port.postMessage({leave: key});
  });
  // Back from the browser's page cache: follow again, from the start (the page skips what it
  // already shows).
  window.addEventListener('pageshow', function (e) {
    if (e.persisted) port.postMessage({follow: key, after: ''});
  });

  function live(text) {
    state.textContent = text;
    state.dataset.state = followed.dataset.live;
  }
  on.open = function () {
    if (followed.dataset.live !== 'ended') live('Live');
  };
  // A lost connection (the server restarting) is reopened by feed.js, from where it was.
  on.error = function () {
    if (followed.dataset.live === 'ended') return;
    followed.dataset.live = 'off';
    live('Reconnecting…');
  };
  // The browser's session ended: the server says why, with a login that comes back here.
  on.ended = function (d) {
    followed.dataset.live = 'ended';
    live('');
    document.querySelector('main').insertAdjacentHTML('afterbegin', d.html);
  };
  on.live = function () {
    followed.dataset.live = 'on';
    live('Live');
  };
  on.reload = function () {
    location.reload();
  };
})();
