-- Paging: every list pages with opaque cursors (server.lua sets
-- pagination = { page_size = 50 }), so with these 60 generated resources
-- resources/list takes two pages. Cursors are bound to the exact catalog: a
-- reload that changes anything expires them with -32602.
local snodo = require "snodo"

for i = 1, 60 do
  local uri = ("pages://item/%02d"):format(i)
  snodo.resource(("page_%02d"):format(i)) {
    uri = uri,
    mime_type = "text/plain",
    read = function() return ("item %d of 60"):format(i) end,
  }
end
