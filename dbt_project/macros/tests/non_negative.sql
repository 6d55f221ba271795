{% test non_negative(model, column_name) %}
-- a count or a size: null is allowed (no data for that row), negative is not
select {{ column_name }}
from {{ model }}
where {{ column_name }} < 0
{% endtest %}
