-- Resources: an exact URI, templates whose variables arrive in params, and
-- files served safely from a folder (seed "Resources", "Values that name
-- files").
local snodo = require "snodo"

snodo.resource "package_info" {
  uri_template = "hex://{name}/info",
  mime_type = "application/json",
  read = function(params, ctx)
    return { name = params.name } -- a table is JSON text
  end,
}

snodo.resource "readme" {
  uri = "hex://snodo/readme",
  title = "Read me",
  description = "What these examples are",
  mime_type = "text/markdown",
  size = 42,
  annotations = { audience = { "user" }, priority = 0.5 },
  read = function() return "# Snodo examples\nTools, resources, prompts." end,
}

snodo.resource "logo" {
  uri = "hex://snodo/logo.png",
  mime_type = "image/png",
  read = function() return snodo.blob("\x89PNG\r\n\x1a\n") end, -- base64 "blob" on the wire
}

-- Files from components/docs. A matched value is decoded once and may hold
-- "/" or ".." or a NUL byte: snodo.safe_path resolves it under the root and
-- refuses anything that escapes it.
local root = snodo.directory .. "/docs"

snodo.resource "docs" {
  uri_template = "file:///docs/{+path}",
  mime_type = "text/plain",
  read = function(params)
    local path = snodo.safe_path(root, params.path)
    if not path then return nil end -- not found, never an empty contents list
    local f = io.open(path, "rb")
    if not f then return nil end
    local text = f:read("a")
    f:close()
    return text
  end,
}
