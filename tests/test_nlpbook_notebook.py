from nlpbook.notebook import add_to_class


def test_add_to_class_attaches_a_method_to_existing_instances():
    class Counter:
        def __init__(self):
            self.count = 1

    made_before = Counter()

    @add_to_class(Counter)
    def doubled(self):
        return 2 * self.count

    assert made_before.doubled() == 2 and Counter().doubled() == 2
    assert doubled(made_before) == 2  # the function itself stays usable
