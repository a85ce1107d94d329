-- Argo CD health of a RecordPurge (kafka-retention.io/RecordPurge). Argo CD runs this
-- with gopher-lua (Lua 5.1) and the object as the global `obj`.
--   no phase yet                     -> Progressing (the operator has not taken it up)
--   Pending, Planning, Purging       -> Progressing, with partitions purged so far
--   Succeeded                        -> Healthy
--   PartiallySucceeded, Failed       -> Degraded, with the operator's reason
local hs = {}

local function condition(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function said(c)
  if c == nil then
    return ""
  end
  local text = (c.reason or "") .. ": " .. (c.message or "")
  return text
end

local status = obj.status
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to plan this purge"
  return hs
end

local phase = status.phase
local summary = status.summary or {}
if phase == "Pending" or phase == "Planning" or phase == "Purging" then
  hs.status = "Progressing"
  if summary.partitions ~= nil then
    hs.message = phase .. ": " .. tostring(summary.purged or 0) .. " of "
      .. tostring(summary.partitions) .. " partitions purged"
  else
    hs.message = phase
  end
  return hs
end

if phase == "Succeeded" then
  hs.status = "Healthy"
  hs.message = said(condition(status.conditions, "Succeeded"))
  return hs
end

if phase == "PartiallySucceeded" or phase == "Failed" then
  hs.status = "Degraded"
  local why = condition(status.conditions, "Succeeded")
  local ready = condition(status.conditions, "Ready")
  if ready ~= nil and ready.status == "False" then
    why = ready
  end
  hs.message = phase .. ": " .. said(why)
  return hs
end

hs.status = "Unknown"
hs.message = "Unknown phase " .. tostring(phase)
return hs
