-- Resources, the template and the watched resource (FIXTURE.md C.5). The
-- first listed resource is readable (the caching scenario reads it).
local snodo = require "snodo"
local media = require "media"

snodo.resource "static_text" {
  uri = "test://static-text",
  description = "A static text resource",
  mime_type = "text/plain",
  read = function() return "This is the content of the static text resource." end,
}

snodo.resource "static_binary" {
  uri = "test://static-binary",
  description = "A static binary resource",
  mime_type = "image/png",
  read = function() return snodo.blob(media.png, "image/png") end,
}

snodo.resource "watched_resource" {
  uri = "test://watched-resource",
  description = "A resource the client may subscribe to",
  mime_type = "text/plain",
  read = function() return "Watched resource content" end,
}

snodo.resource "template" {
  uri_template = "test://template/{id}/data",
  description = "Data for an id",
  mime_type = "application/json",
  read = function(params)
    return { id = params.id, templateTest = true, data = "Data for ID: " .. params.id }
  end,
}
