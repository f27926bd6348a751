// The API docs page: Swagger UI from the vendored bundle, with ninja's settings, sending the CSRF token when the
// API's auth needs one.
(function () {
  "use strict";
  const config = JSON.parse(document.getElementById("swagger-settings").textContent);
  const csrfToken = document.body.dataset.csrfToken;
  config.dom_id = "#swagger-ui";
  config.presets = [window.SwaggerUIBundle.presets.apis, window.SwaggerUIBundle.SwaggerUIStandalonePreset];
  if (csrfToken) {
    config.requestInterceptor = (request) => {
      request.headers["X-CSRFToken"] = csrfToken;
      return request;
    };
  }
  window.SwaggerUIBundle(config);
})();
