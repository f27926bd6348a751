// static/js holds plain browser scripts (each an IIFE, sharing only window.Pilothouse), not modules.
import js from "@eslint/js";
import globals from "globals";

export default [
  // Vendored third-party files (static/vendor) are kept byte-identical to their release, never linted.
  { ignores: ["static/vendor/**"] },
  js.configs.recommended,
  {
    files: ["static/js/**/*.js"],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: "script",
      globals: { ...globals.browser },
    },
  },
];
