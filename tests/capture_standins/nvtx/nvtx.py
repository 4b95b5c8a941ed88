import functools

from nvtx._lib.lib import Domain
from nvtx._lib.lib import end_range as libnvtx_end_range
from nvtx._lib.lib import pop_range as libnvtx_pop_range
from nvtx._lib.lib import push_range as libnvtx_push_range
from nvtx._lib.lib import start_range as libnvtx_start_range


@functools.cache
def get_domain(name=None):
    return Domain(name)


class annotate:
    def __init__(self, message=None, color=None, domain=None, category=None, payload=None):
        self.domain = get_domain(domain)
        self.attributes = self.domain.get_event_attributes(message)

    def __enter__(self):
        libnvtx_push_range(self.attributes, self.domain.handle)
        return self

    def __exit__(self, *exc):
        libnvtx_pop_range(self.domain.handle)
        return False


def push_range(message=None, color="blue", domain=None, category=None, payload=None):
    d = get_domain(domain)
    libnvtx_push_range(d.get_event_attributes(message), d.handle)


def pop_range(domain=None):
    libnvtx_pop_range(get_domain(domain).handle)


def start_range(message=None, color=None, domain=None, category=None, payload=None):
    d = get_domain(domain)
    return libnvtx_start_range(d.get_event_attributes(message), d.handle)


def end_range(range_id):
    libnvtx_end_range(*range_id)
