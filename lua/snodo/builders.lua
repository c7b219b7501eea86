-- Result builders for the snodo module. Lua decorates, C validates: these
-- only tag plain tables with the metatables that host/lua/call.c recognises;
-- every rule (types, UTF-8, base64, shapes) is checked in C when a handler's
-- return value is converted.
return function(snodo, mt)
  local function tag(t, m) return setmetatable(t, m) end

  local function copy_opts(t, opts, keys)
    if opts == nil then return t end
    if type(opts) ~= "table" then error("options must be a table", 3) end
    for k, v in pairs(opts) do
      local wire = keys[k]
      if wire == nil then error(("unknown option '%s'"):format(tostring(k)), 3) end
      t[wire] = v
    end
    return t
  end

  local content_opts = { annotations = "annotations", metadata = "_meta" }
  local link_opts = { title = "title", description = "description", mime_type = "mimeType",
                      size = "size", icons = "icons", annotations = "annotations",
                      metadata = "_meta" }

  --- A text content block.
  function snodo.text(text, opts)
    assert(type(text) == "string", "snodo.text expects a string")
    return tag(copy_opts({ type = "text", text = text }, opts, content_opts), mt.content)
  end

  --- An image content block from raw bytes (the host base64-encodes them).
  function snodo.image(bytes, mime_type, opts)
    assert(type(bytes) == "string", "snodo.image expects the image bytes as a string")
    assert(type(mime_type) == "string", "snodo.image expects a MIME type")
    return tag(copy_opts({ type = "image", data = snodo.base64(bytes), mimeType = mime_type },
                         opts, content_opts), mt.content)
  end

  --- An audio content block from raw bytes.
  function snodo.audio(bytes, mime_type, opts)
    assert(type(bytes) == "string", "snodo.audio expects the audio bytes as a string")
    assert(type(mime_type) == "string", "snodo.audio expects a MIME type")
    return tag(copy_opts({ type = "audio", data = snodo.base64(bytes), mimeType = mime_type },
                         opts, content_opts), mt.content)
  end

  --- A link to a resource the client may read.
  function snodo.resource_link(uri, name, opts)
    assert(type(uri) == "string" and type(name) == "string",
           "snodo.resource_link expects a URI and a name")
    return tag(copy_opts({ type = "resource_link", uri = uri, name = name }, opts, link_opts),
               mt.content)
  end

  --- Binary resource contents (base64 "blob" on the wire).
  function snodo.blob(bytes, mime_type)
    assert(type(bytes) == "string", "snodo.blob expects the bytes as a string")
    return tag({ blob = bytes, mime_type = mime_type }, mt.blob)
  end

  --- A resource embedded in a result: text (a string) or snodo.blob(bytes).
  function snodo.embedded_resource(uri, contents, opts)
    assert(type(uri) == "string", "snodo.embedded_resource expects a URI")
    local resource = { uri = uri }
    if getmetatable(contents) == mt.blob then
      resource.blob = snodo.base64(contents.blob)
      resource.mimeType = contents.mime_type
    else
      assert(type(contents) == "string", "contents must be a string or snodo.blob(bytes)")
      resource.text = contents
    end
    local o = {}
    for k, v in pairs(opts or {}) do o[k] = v end
    if o.mime_type then resource.mimeType = o.mime_type; o.mime_type = nil end
    return tag(copy_opts({ type = "resource", resource = resource }, o, content_opts), mt.content)
  end

  --- Structured content (the JSON text is added as a text block for older clients).
  function snodo.structured(value, opts)
    local r = { structured = value }
    for k, v in pairs(opts or {}) do r[k] = v end
    return tag(r, mt.result)
  end

  --- Full control over a tool result: { content = {...}, structured = v,
  --- is_error = bool, metadata = {...} }.
  function snodo.result(fields)
    assert(type(fields) == "table", "snodo.result expects a table")
    local r = {}
    for k, v in pairs(fields) do r[k] = v end
    return tag(r, mt.result)
  end

  --- One prompt message: role "user" or "assistant", content a string or a block.
  function snodo.message(role, content)
    if type(content) == "string" then content = snodo.text(content) end
    return tag({ role = role, content = content }, mt.message)
  end

  --- A prompt result with a description or metadata:
  --- snodo.prompt_result(messages, { description = ..., metadata = ... }).
  function snodo.prompt_result(messages, opts)
    assert(type(messages) == "table", "snodo.prompt_result expects a list of messages")
    local r = { messages = messages }
    for k, v in pairs(opts or {}) do r[k] = v end
    return tag(r, mt.prompt_result)
  end

  --- Completion values (at most 100 are sent; more sets has_more):
  --- snodo.completion(values, { total = n, has_more = bool }).
  function snodo.completion(values, opts)
    assert(type(values) == "table", "snodo.completion expects a list of strings")
    local r = { values = values }
    for k, v in pairs(opts or {}) do r[k] = v end
    return tag(r, mt.completion)
  end

  --- Stateless-era input (2026-07-28 multi round-trip): return
  --- snodo.input_required():elicit(key, message, schema):state(value) and the
  --- client retries with the answers, read with ctx:input_response(key) and
  --- ctx:request_state(). Keys are unique within one result.
  local Input = {}
  mt.input_required.__index = Input

  local function add(self, key, request)
    assert(type(key) == "string" and key ~= "", "an input request needs a non-empty string key")
    if self.requests[key] ~= nil then
      error(("input request key '%s' is used twice"):format(key), 3)
    end
    self.requests[key] = request
    return self
  end

  --- A form: elicitation/create with a flat object schema of primitives.
  function Input:elicit(key, message, schema)
    assert(type(message) == "string", "elicit needs a message")
    return add(self, key, { method = "elicitation/create", params = {
      message = message,
      requestedSchema = schema or { type = "object", properties = {} },
    } })
  end

  --- URL mode: the user completes an interaction at `url` out of band.
  function Input:elicit_url(key, message, url)
    assert(type(message) == "string" and type(url) == "string", "elicit_url needs a message and a URL")
    return add(self, key, { method = "elicitation/create",
                            params = { mode = "url", message = message, url = url } })
  end

  --- sampling/createMessage with its params (messages, maxTokens, ...).
  function Input:sample(key, params)
    assert(type(params) == "table", "sample needs the sampling/createMessage params")
    return add(self, key, { method = "sampling/createMessage", params = params })
  end

  --- roots/list.
  function Input:list_roots(key)
    return add(self, key, { method = "roots/list", params = {} })
  end

  --- A value that comes back on the retry as ctx:request_state(), signed.
  function Input:state(value)
    self.has_state = true
    self.state_value = value
    return self
  end

  function snodo.input_required()
    return tag({ requests = {} }, mt.input_required)
  end

  snodo.content_mt = mt.content
  return snodo
end
