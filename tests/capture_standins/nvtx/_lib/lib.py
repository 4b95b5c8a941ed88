from _log import log

_ids = [0]


class DomainHandle:
    def __init__(self, name=None):
        self._name = name or ""

    @property
    def name(self):
        return self._name


class RegisteredString:
    def __init__(self, domain, string=None):
        self.string = string
        self.domain = domain


class EventAttributes:
    def __init__(self, message=None):
        self.message = message


class Domain:
    def __init__(self, name=None):
        self.name = name
        self.handle = DomainHandle(name)
        log(op="domain", domain=name)

    def get_registered_string(self, s):
        return RegisteredString(self.handle, s)

    def get_event_attributes(self, message=None, color=None, category=None, payload=None):
        return EventAttributes(self.get_registered_string(message) if message is not None else None)

    def push_range(self, attributes=None, *, message=None, color=None, category=None, payload=None):
        if attributes is None:
            attributes = self.get_event_attributes(message)
        push_range(attributes, self.handle)

    def pop_range(self):
        pop_range(self.handle)

    def start_range(self, attributes=None, *, message=None, color=None, category=None, payload=None):
        if attributes is None:
            attributes = self.get_event_attributes(message)
        return start_range(attributes, self.handle)[0]

    def end_range(self, range_id):
        end_range(range_id, self.handle)


def _msg(attributes):
    m = attributes.message if attributes is not None else None
    return getattr(m, "string", m)


def push_range(attributes, domain):
    log(op="push", domain=domain.name or None, name=_msg(attributes))


def pop_range(domain):
    log(op="pop", domain=domain.name or None)


def start_range(attributes, domain):
    _ids[0] += 1
    log(op="start", domain=domain.name or None, name=_msg(attributes), id=_ids[0])
    return _ids[0], domain


def end_range(range_id, domain):
    log(op="end", domain=domain.name or None, id=range_id)
