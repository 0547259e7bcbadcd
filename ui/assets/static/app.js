// plimsoll's web view: the live part. The server pushes the page's main
// part again, as HTML it rendered and escaped, each time what the page
// shows changes (Server-Sent Events); this swaps it in place, keeping the
// focus and the open details. Without this script the pages work all the
// same, as of when they were loaded.
(function () {
  'use strict';
  var live = document.body.getAttribute('data-live');
  var main = document.getElementById('main');
  var status = document.getElementById('live');
  if (!live || !main || !status || !window.EventSource) {
    return;
  }
  var updates = 0;
  var stream = new EventSource(live);
  function say(text) {
    if (status.textContent !== text) {
      status.textContent = text;
    }
  }
  stream.addEventListener('open', function () {
    say('live');
  });
  stream.addEventListener('error', function () {
    say('reconnecting…');
  });
  stream.addEventListener('page', function (e) {
    var active = document.activeElement;
    var focused = active && main.contains(active) ? active.id : '';
    var open = [];
    main.querySelectorAll('details').forEach(function (d, i) {
      if (d.open) {
        open.push(i);
      }
    });
    main.innerHTML = e.data;
    main.querySelectorAll('details').forEach(function (d, i) {
      if (open.indexOf(i) >= 0) {
        d.open = true;
      }
    });
    if (focused) {
      var el = document.getElementById(focused);
      if (el) {
        el.focus();
      }
    }
    updates += 1;
    document.body.setAttribute('data-updates', String(updates));
    say('live');
  });
  stream.addEventListener('gone', function (e) {
    stream.close();
    say(e.data);
  });
})();
