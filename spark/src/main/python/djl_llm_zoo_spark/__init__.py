"""PySpark wrappers of djl-llm-zoo's Spark ML Transformers.

``LlmGenerator`` and ``LlmScorer`` here drive the JVM classes of the same names
(``io.github.djlllmzoo.spark``) through py4j, as PySpark's own ML stages drive theirs: the
generation and scoring run on the executors' JVMs, never in Python. Each Param mirrors the JVM
Transformer's (name, type, default and description; the spark module's tests check that they
agree). The package ships inside the module's assembly jar, so one jar serves both sides::

    spark-submit --jars spark-0.1.0-SNAPSHOT-assembly.jar --py-files spark-0.1.0-SNAPSHOT-assembly.jar job.py

    from djl_llm_zoo_spark import LlmGenerator
    generator = LlmGenerator(model="/shared/models/default", doSample=False, maxNewTokens=64, batchSize=8)
    generator.transform(spark.read.json("tickets.jsonl")).write.parquet("summaries")

Each stage saves and loads on its own (``generator.save(path)``, ``LlmGenerator.load(path)``).
PySpark's ``PipelineModel.load`` finds a stage's Python class from its JVM class name, which
only works for PySpark's own stages; a pipeline holding these stages loads from Java or Scala.
"""

from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.util import JavaMLReadable, JavaMLReader, JavaMLWritable
from pyspark.ml.wrapper import JavaTransformer

__all__ = ["LlmGenerator", "LlmScorer"]

_JAVA_PACKAGE = "io.github.djlllmzoo.spark"


class _JvmClassReader(JavaMLReader):
    """Reads a saved stage through its JVM class in ``io.github.djlllmzoo.spark``."""

    @classmethod
    def _java_loader_class(cls, clazz):
        return _JAVA_PACKAGE + "." + clazz.__name__


class _LlmTransformer(JavaTransformer, JavaMLReadable, JavaMLWritable):
    """The Params both transformers share (the JVM's ``LlmTransformer``)."""

    inputCol = Param(Params._dummy(), "inputCol", "the input column (a string column)",
                     typeConverter=TypeConverters.toString)
    model = Param(Params._dummy(), "model",
                  "a registry name, Hugging Face id or checkpoint directory every executor can read",
                  typeConverter=TypeConverters.toString)
    dtype = Param(Params._dummy(), "dtype", "element type of weights and KV cache: float32, or float16 on gpu",
                  typeConverter=TypeConverters.toString)
    device = Param(Params._dummy(), "device", "where executors run the model: cpu or gpu",
                   typeConverter=TypeConverters.toString)
    batchSize = Param(Params._dummy(), "batchSize", "rows per batch on an executor (>= 1)",
                      typeConverter=TypeConverters.toInt)
    errorCol = Param(Params._dummy(), "errorCol",
                     "the column that is null when a row went well, else says why it failed",
                     typeConverter=TypeConverters.toString)

    def __init__(self, default_input_col):
        super().__init__()
        self._java_obj = self._new_java_obj(_JAVA_PACKAGE + "." + type(self).__name__, self.uid)
        self._setDefault(inputCol=default_input_col, errorCol="error", dtype="float32", device="cpu", batchSize=8)

    @classmethod
    def read(cls):
        return _JvmClassReader(cls)

    @classmethod
    def _from_java(cls, java_stage):
        # JavaParams._from_java maps the JVM class name to a PySpark module; these live elsewhere.
        stage = cls()
        stage._java_obj = java_stage
        stage._resetUid(java_stage.uid())
        stage._transfer_params_from_java()
        return stage

    def setModel(self, value):
        return self._set(model=value)

    def getModel(self):
        return self.getOrDefault(self.model)

    def setInputCol(self, value):
        return self._set(inputCol=value)

    def getInputCol(self):
        return self.getOrDefault(self.inputCol)

    def setDtype(self, value):
        return self._set(dtype=value)

    def getDtype(self):
        return self.getOrDefault(self.dtype)

    def setDevice(self, value):
        return self._set(device=value)

    def getDevice(self):
        return self.getOrDefault(self.device)

    def setBatchSize(self, value):
        return self._set(batchSize=value)

    def getBatchSize(self):
        return self.getOrDefault(self.batchSize)

    def setErrorCol(self, value):
        return self._set(errorCol=value)

    def getErrorCol(self):
        return self.getOrDefault(self.errorCol)


class LlmGenerator(_LlmTransformer):
    """Continues each row's prompt (text, or chat messages as an array of role/content structs)
    and appends text, finish_reason, prompt_tokens, completion_tokens and error. Controls left
    unset take the checkpoint's generation_config.json values."""

    maxNewTokens = Param(Params._dummy(), "maxNewTokens", "the most tokens to generate per row (>= 1)",
                         typeConverter=TypeConverters.toInt)
    doSample = Param(Params._dummy(), "doSample", "sample (true) or pick the most likely token (false)",
                     typeConverter=TypeConverters.toBoolean)
    temperature = Param(Params._dummy(), "temperature", "sampling temperature (>= 0)",
                        typeConverter=TypeConverters.toFloat)
    topK = Param(Params._dummy(), "topK", "sample among the k most likely tokens (0 disables)",
                 typeConverter=TypeConverters.toInt)
    topP = Param(Params._dummy(), "topP", "nucleus sampling probability, in (0, 1]",
                 typeConverter=TypeConverters.toFloat)
    minP = Param(Params._dummy(), "minP", "drop tokens less likely than minP times the most likely, in [0, 1]",
                 typeConverter=TypeConverters.toFloat)
    repetitionPenalty = Param(Params._dummy(), "repetitionPenalty", "penalty on tokens already seen (> 0; 1 disables)",
                              typeConverter=TypeConverters.toFloat)
    stopStrings = Param(Params._dummy(), "stopStrings", "texts that end a row's generation",
                        typeConverter=TypeConverters.toListString)
    seed = Param(Params._dummy(), "seed", "the job's seed; each row's sampler seed derives from it and the row",
                 typeConverter=TypeConverters.toInt)
    idCol = Param(Params._dummy(), "idCol", "a column identifying each row, for its seed (unset: the prompt)",
                  typeConverter=TypeConverters.toString)

    @keyword_only
    def __init__(self, *, model=None, inputCol=None, dtype=None, device=None, batchSize=None, errorCol=None,
                 maxNewTokens=None, doSample=None, temperature=None, topK=None, topP=None, minP=None,
                 repetitionPenalty=None, stopStrings=None, seed=None, idCol=None):
        super().__init__("prompt")
        self._setDefault(seed=0, stopStrings=[])
        self.setParams(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, model=None, inputCol=None, dtype=None, device=None, batchSize=None, errorCol=None,
                  maxNewTokens=None, doSample=None, temperature=None, topK=None, topP=None, minP=None,
                  repetitionPenalty=None, stopStrings=None, seed=None, idCol=None):
        """Sets the given Params; those left out keep their values."""
        return self._set(**self._input_kwargs)

    def setMaxNewTokens(self, value):
        return self._set(maxNewTokens=value)

    def setGreedy(self):
        return self._set(doSample=False)

    def setDoSample(self, value):
        return self._set(doSample=value)

    def setTemperature(self, value):
        return self._set(temperature=value)

    def setTopK(self, value):
        return self._set(topK=value)

    def setTopP(self, value):
        return self._set(topP=value)

    def setMinP(self, value):
        return self._set(minP=value)

    def setRepetitionPenalty(self, value):
        return self._set(repetitionPenalty=value)

    def setStopStrings(self, value):
        return self._set(stopStrings=value)

    def setSeed(self, value):
        return self._set(seed=value)

    def setIdCol(self, value):
        return self._set(idCol=value)


class LlmScorer(_LlmTransformer):
    """Scores each row's text as ``bin/llmzoo score`` does and appends token_count, total_logprob,
    mean_logprob, perplexity, token_logprobs (with tokenLogprobs) and error."""

    tokenLogprobs = Param(Params._dummy(), "tokenLogprobs", "also write each token's log-probability (token_logprobs)",
                          typeConverter=TypeConverters.toBoolean)

    @keyword_only
    def __init__(self, *, model=None, inputCol=None, dtype=None, device=None, batchSize=None, errorCol=None,
                 tokenLogprobs=None):
        super().__init__("text")
        self._setDefault(tokenLogprobs=False)
        self.setParams(**self._input_kwargs)

    @keyword_only
    def setParams(self, *, model=None, inputCol=None, dtype=None, device=None, batchSize=None, errorCol=None,
                  tokenLogprobs=None):
        """Sets the given Params; those left out keep their values."""
        return self._set(**self._input_kwargs)

    def setTokenLogprobs(self, value):
        return self._set(tokenLogprobs=value)
