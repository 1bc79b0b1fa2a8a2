// Runs before Gradio's own scripts (specviz/app/serving.py places it first in the page's <head>).
//
// Gradio 6.31's page shows a loading screen whose status tracker starts its elapsed-time timer: a
// requestAnimationFrame loop that asks for the next frame while the tracker's status is "pending". When the app
// appears, the loading screen is removed while its status is still "pending", and nothing stops the loop: it
// asks for 60 frames a second for as long as the page is open (a sixth of a core in headless Chromium, and a
// phone's battery). This drops a status tracker's timer frame when no status tracker on the page is pending
// (only a pending one holds a .progress-text), which ends the orphaned loop. A pending tracker's timer runs as
// before, and the next time a tracker turns pending it starts a loop of its own.
(() => {
  const request = window.requestAnimationFrame.bind(window);
  window.requestAnimationFrame = (callback) => {
    const caller = (new Error().stack || "").split("\n")[2] || "";  // [0] "Error", [1] this function
    const statusTimer = /statustracker-[\w-]+\.js/.test(caller) && String(callback).includes("performance.now()");
    if (!statusTimer) return request(callback);
    return request((time) => {
      if (document.querySelector('[data-testid="status-tracker"] .progress-text')) callback(time);
    });
  };
})();
