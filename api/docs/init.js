// Renders /openapi.json with Redoc (docs/redoc.standalone.js) into #redoc.
// It is a file of its own because the page's Content-Security-Policy allows
// no inline script. The server puts a fresh nonce for Redoc's <style>
// elements into data-style-nonce; Redoc hands it to styled-components,
// which adds it to every <style> element it creates.
(function () {
  'use strict';
  var el = document.getElementById('redoc');
  Redoc.init(el.dataset.specUrl, {
    nonce: el.dataset.styleNonce,
    expandResponses: '200,201',
    pathInMiddlePanel: true,
    requiredPropsFirst: true,
    sortTagsAlphabetically: false,
  }, el);
})();
